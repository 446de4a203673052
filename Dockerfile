FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /app
COPY pyproject.toml ./
RUN python -c 'import tomllib,subprocess,sys;p=tomllib.load(open("pyproject.toml","rb"))["project"];subprocess.check_call([sys.executable,"-m","pip","install","--no-cache-dir",*p["dependencies"],*p["optional-dependencies"]["server"]])'
COPY . .
RUN useradd --create-home app && mkdir -p /app/var && chown -R app /app/var
USER app
EXPOSE 8000
CMD ["gunicorn", "dashboard.wsgi:application", "--bind", "0.0.0.0:8000"]
